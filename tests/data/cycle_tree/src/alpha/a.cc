// alpha uses beta
#include "trainscope/beta/b.h"
