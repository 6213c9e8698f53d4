/* Placeholder: being written. */
#include "tuner/measure.h"
