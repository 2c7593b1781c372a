// beta uses alpha: a cycle
#include "trainscope/alpha/a.h"
