/* 2D Jacobi relaxation with two arrays: the mean of the 4 neighbours of a into b. */
double a[M][N];
double b[M][N];

for (int j = 1; j < M-1; j++)
    for (int i = 1; i < N-1; i++)
        b[j][i] = 0.25*(a[j][i-1] + a[j][i+1] + a[j-1][i] + a[j+1][i]);
