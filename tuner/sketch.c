/* Placeholder: being written. */
#include "tuner/sketch.h"
