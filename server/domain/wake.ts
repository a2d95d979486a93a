/**
 * Resolves when the function handed to `register` is called, or after `timeoutMs`, whichever comes
 * first: what a shutdown or a request waits with for work it does not own (an upload, a render).
 */
export function wokenOrTimedOut(timeoutMs: number, register: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    register(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
