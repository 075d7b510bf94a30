#include "trace/trace-hw_misc_tnpu.h"
