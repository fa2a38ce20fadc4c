#include "low/d.h"
