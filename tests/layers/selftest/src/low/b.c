#include "top/a.h"
int low_b(void) { return 0; }
