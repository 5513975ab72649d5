// Dot product: s += x[i]*y[i] (the built-in dot's stream: the sum lives in a register).
double x[N], y[N];
double s;

for (int i = 0; i < N; i++)
    s += x[i]*y[i];
