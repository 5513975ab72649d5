/* 3D 7-point Jacobi sweep: the built-in stencil7 written as a loop nest.
   a is the old grid, b the new one; N interior points a dimension plus a halo. */
double a[N+2][N+2][N+2];
double b[N+2][N+2][N+2];

for (int k = 1; k < N+1; k++)
    for (int j = 1; j < N+1; j++)
        for (int i = 1; i < N+1; i++)
            b[k][j][i] = -6*a[k][j][i] + a[k][j][i-1] + a[k][j][i+1]
                       + a[k][j-1][i] + a[k][j+1][i] + a[k-1][j][i] + a[k+1][j][i];
