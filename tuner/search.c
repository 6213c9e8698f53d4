/* Placeholder: being written. */
#include "tuner/search.h"
