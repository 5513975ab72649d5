// STREAM triad (McCalpin): z = x + q*y; the built-in triad's stream.
double x[N], y[N], z[N];
double q;

for (int i = 0; i < N; ++i)
    z[i] = x[i] + q*y[i];
