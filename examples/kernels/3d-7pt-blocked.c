/* The 3D 7-point Jacobi sweep blocked in k (BK planes) and j (BJ rows): the built-in
   stencil7 with bk=BK bj=BJ. The && bounds cut the last block short. */
double a[N+2][N+2][N+2];
double b[N+2][N+2][N+2];

for (int kk = 1; kk < N+1; kk += BK)
    for (int jj = 1; jj < N+1; jj += BJ)
        for (int k = kk; k < kk+BK && k < N+1; k++)
            for (int j = jj; j < jj+BJ && j < N+1; j++)
                for (int i = 1; i < N+1; i++)
                    b[k][j][i] = -6*a[k][j][i] + a[k][j][i-1] + a[k][j][i+1]
                               + a[k][j-1][i] + a[k][j+1][i] + a[k-1][j][i] + a[k+1][j][i];
