#include "low/c.h"
