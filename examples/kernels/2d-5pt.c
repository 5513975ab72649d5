/* 2D 5-point Jacobi sweep (the built-in stencil5): b = -4*centre + 4 neighbours.
   N x N interior points plus a one-point halo; i (x) the fastest index. */
double a[N+2][N+2];
double b[N+2][N+2];

for (int j = 1; j < N+1; j++)
    for (int i = 1; i < N+1; i++)
        b[j][i] = -4*a[j][i] + a[j][i-1] + a[j][i+1] + a[j-1][i] + a[j+1][i];
