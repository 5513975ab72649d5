/* 3D 27-point (3 x 3 x 3 box) stencil, one weight per distance class:
   centre, 6 faces, 12 edges, 8 corners (4 multiplies + 26 adds). */
double a[N+2][N+2][N+2];
double b[N+2][N+2][N+2];
double w0, w1, w2, w3;

for (int k = 1; k < N+1; k++)
    for (int j = 1; j < N+1; j++)
        for (int i = 1; i < N+1; i++)
            b[k][j][i] = w0*a[k][j][i]
                + w1*(a[k][j][i-1] + a[k][j][i+1] + a[k][j-1][i] + a[k][j+1][i]
                      + a[k-1][j][i] + a[k+1][j][i])
                + w2*(a[k][j-1][i-1] + a[k][j-1][i+1] + a[k][j+1][i-1] + a[k][j+1][i+1]
                      + a[k-1][j][i-1] + a[k-1][j][i+1] + a[k+1][j][i-1] + a[k+1][j][i+1]
                      + a[k-1][j-1][i] + a[k-1][j+1][i] + a[k+1][j-1][i] + a[k+1][j+1][i])
                + w3*(a[k-1][j-1][i-1] + a[k-1][j-1][i+1] + a[k-1][j+1][i-1]
                      + a[k-1][j+1][i+1] + a[k+1][j-1][i-1] + a[k+1][j-1][i+1]
                      + a[k+1][j+1][i-1] + a[k+1][j+1][i+1]);
