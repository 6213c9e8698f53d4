/* Direct evaluation of loop programs (ir/loop_eval.c). */
#ifndef TESSEL_IR_LOOP_EVAL_H
#define TESSEL_IR_LOOP_EVAL_H

#include "ir/loop.h"
#include "tessel/tensor.h"

/* Run "p" on "args" (one tensor per program argument, in order, with the
 * arguments' dtypes and shapes), writing the outputs.  Every access is
 * bounds-checked: an out-of-bounds access or an integer division by zero
 * is an error in "ctx" (the outputs are then left untouched). */
int loop_eval(tessel_ctx *ctx, const loop_prog *p, tessel_tensor *const *args);

#endif
