/* PM sampling (GPUPHASE_PM=1) as the lifecycle and the writer thread see
 * it: the sampler of cupti/pm_sampling.c started at the lazy start,
 * its samples turned into METRIC, SAMPLE and SAMPLER records by the
 * writer thread, stopped in the writer's last pass. */
#ifndef GP_PMSAMPLE_H
#define GP_PMSAMPLE_H

/* GPUPHASE_PM and GPUPHASE_PM_INTERVAL_US (constructor). */
void gp_pmsample_settings(void);
/* At the first CUDA call, after CUPTI was opened (or not): starts the
 * sampling thread, when enabled; devices come with gp_pmsample_device. */
void gp_pmsample_begin(void);
/* The writer met device dev (records.c): sampled too. */
void gp_pmsample_device(int dev);
/* Writer thread: the samples waiting, to records. */
void gp_pmsample_drain(void);
/* Writer thread, last pass, after the last device records: stops the
 * sampler (its last samples included) and writes what it gave. */
void gp_pmsample_end(void);
/* In a forked child or after a failed exec. */
void gp_pmsample_forget(void);

#endif
