/* Transposed copy: b = a^T, b written along its rows, a read down its columns. */
double a[N][M];
double b[M][N];

for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++)
        b[i][j] = a[j][i];
