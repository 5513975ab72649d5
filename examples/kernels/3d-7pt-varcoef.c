/* 3D 7-point stencil with variable coefficients: one coefficient array per axis
   and one for the centre, read at the point (4 multiplies + 6 adds). */
double a[N+2][N+2][N+2];
double b[N+2][N+2][N+2];
double c0[N+2][N+2][N+2];
double cx[N+2][N+2][N+2];
double cy[N+2][N+2][N+2];
double cz[N+2][N+2][N+2];

for (int k = 1; k < N+1; k++)
    for (int j = 1; j < N+1; j++)
        for (int i = 1; i < N+1; i++)
            b[k][j][i] = c0[k][j][i]*a[k][j][i]
                       + cx[k][j][i]*(a[k][j][i-1] + a[k][j][i+1])
                       + cy[k][j][i]*(a[k][j-1][i] + a[k][j+1][i])
                       + cz[k][j][i]*(a[k-1][j][i] + a[k+1][j][i]);
