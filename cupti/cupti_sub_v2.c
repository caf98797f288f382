/* cuptiSubscribe_v2, interposed like cuptiSubscribe (cupti_glue.c): a
 * tool that subscribes through it gets CUPTI handed over as one that uses
 * cuptiSubscribe does. Its own file, without the CUPTI headers: those of
 * CUDA 12 do not declare it, those of CUDA 13 declare its parameters'
 * struct, and the interposer takes them as they come (CUptiResult is an
 * enum: an int in the ABI). */
int gp_cupti_subscribe_v2(void *sub, void *cb, void *ud, void *params);

__attribute__((visibility("default"))) int cuptiSubscribe_v2(void *sub,
                                                             void *cb,
                                                             void *ud,
                                                             void *params) {
  return gp_cupti_subscribe_v2(sub, cb, ud, params);
}
