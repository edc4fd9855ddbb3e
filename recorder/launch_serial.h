/*
 * launch_serial.h: one open launch at a time, whichever host thread
 * launches.  Both recorders serialize launches (the ring tells launches
 * apart by their order, RECORDER.md); a lock held from a launch's begin
 * callback to its end keeps a second thread's launch from taking the open
 * one's place (its records, its end), as it did before.
 */
#ifndef WARPRACE_LAUNCH_SERIAL_H
#define WARPRACE_LAUNCH_SERIAL_H

/* Takes the lock for the calling thread's launch.  A thread that holds it
 * already (an end never came) goes on; one that waits WRR_LAUNCH_SERIAL_WAIT_S
 * seconds for it goes on unserialized rather than hang.  0, or -1 after
 * such a wait (the caller says so). */
#define WRR_LAUNCH_SERIAL_WAIT_S 30
int wrr_launch_serial_take(void);
/* The same, waiting at most `seconds` (tests). */
int wrr_launch_serial_take_within(double seconds);
/* Releases it if the calling thread holds it. */
void wrr_launch_serial_release(void);

#endif
