/* Dense matrix-vector product y += A x, column by column (j outer, i inner):
   A is walked down its columns and y is read and written every iteration. */
double A[M][N], x[N], y[M];

for (int j = 0; j < N; j++)
    for (int i = 0; i < M; i++)
        y[i] += A[i][j]*x[j];
