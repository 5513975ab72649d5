/* 2D Gauss-Seidel relaxation in place: one array, updated values used at once. */
double a[M][N];

for (int j = 1; j < M-1; j++)
    for (int i = 1; i < N-1; i++)
        a[j][i] = 0.25*(a[j][i-1] + a[j][i+1] + a[j-1][i] + a[j+1][i]);
