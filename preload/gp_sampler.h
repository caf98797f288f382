/* The counter sampler (sampler.c): a thread of its own that reads NVML
 * (every GPUPHASE_SAMPLE_MS) and GPM (every max(200 ms, that)) for the
 * devices the trace describes, and hands METRIC, SAMPLE and SAMPLER
 * records to the writer thread through a bounded queue. Driven by the
 * lifecycle (shim.c: start) and the writer (writer.c: poll, finish,
 * reset). See docs/counters.md, "Sampling". */
#ifndef GP_SAMPLER_H
#define GP_SAMPLER_H

/* At the lazy start of recording (an application thread, never the
 * constructor): starts the thread unless GPUPHASE_NVML=0 or
 * GPUPHASE_SAMPLE_MS=0. since: CLOCK_MONOTONIC ns when recording started
 * (NVML's utilisation periods are kept from there). */
void gp_sampler_start(uint64_t since);
/* Writer thread, every pass: tells the sampler the described devices
 * (waking it to read a new one at once) and writes the records it queued. */
void gp_sampler_poll(void);
/* Writer thread, in its last pass (after the last device records, before
 * the last flush): stops the thread after one last reading and writes
 * everything it left. */
void gp_sampler_finish(void);
/* In a forked child or after a failed exec: no sampler until recording
 * starts again. */
void gp_sampler_reset(void);

#endif
