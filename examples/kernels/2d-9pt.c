/* 2D 9-point (3 x 3 box) stencil, one weight per distance class:
   centre, the 4 faces, the 4 corners. */
double a[N+2][N+2];
double b[N+2][N+2];
double w0, w1, w2;

for (int j = 1; j < N+1; j++)
    for (int i = 1; i < N+1; i++)
        b[j][i] = w0*a[j][i]
                + w1*(a[j][i-1] + a[j][i+1] + a[j-1][i] + a[j+1][i])
                + w2*(a[j-1][i-1] + a[j-1][i+1] + a[j+1][i-1] + a[j+1][i+1]);
