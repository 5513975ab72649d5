// DAXPY: y = a*x + y (the built-in daxpy's stream).
double x[N], y[N];
double a;

for (int i = 0; i < N; i++)
    y[i] = a*x[i] + y[i];
