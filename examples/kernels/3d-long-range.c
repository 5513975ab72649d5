/* 3D long-range stencil of radius 4 (25 points: the centre and 4 points each way
   along each axis), one weight per distance: 5 multiplies + 24 adds. */
double a[N+8][N+8][N+8];
double b[N+8][N+8][N+8];
double c0, c1, c2, c3, c4;

for (int k = 4; k < N+4; k++)
    for (int j = 4; j < N+4; j++)
        for (int i = 4; i < N+4; i++)
            b[k][j][i] = c0*a[k][j][i]
                + c1*(a[k][j][i-1] + a[k][j][i+1] + a[k][j-1][i] + a[k][j+1][i]
                      + a[k-1][j][i] + a[k+1][j][i])
                + c2*(a[k][j][i-2] + a[k][j][i+2] + a[k][j-2][i] + a[k][j+2][i]
                      + a[k-2][j][i] + a[k+2][j][i])
                + c3*(a[k][j][i-3] + a[k][j][i+3] + a[k][j-3][i] + a[k][j+3][i]
                      + a[k-3][j][i] + a[k+3][j][i])
                + c4*(a[k][j][i-4] + a[k][j][i+4] + a[k][j-4][i] + a[k][j+4][i]
                      + a[k-4][j][i] + a[k+4][j][i]);
