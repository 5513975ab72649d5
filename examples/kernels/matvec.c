/* Dense matrix-vector product y = A x, row by row (i outer, j inner): the row's sum
   stays in a register and y[i] is stored once a row (the built-in dgemv). */
double A[M][N], x[N], y[M];
double s;

for (int i = 0; i < M; i++) {
    s = 0.0;
    for (int j = 0; j < N; j++)
        s += A[i][j]*x[j];
    y[i] = s;
}
