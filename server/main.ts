/** `npm run server`: the bundled server, configured by environment variables (DESIGN §2). */
import { ConfigError, loadConfig } from './config.js';
import { keepHeapHeadroom } from './heap-headroom.js';

async function main(): Promise<void> {
  const config = loadConfig();
  keepHeapHeadroom();
  // Loaded once the settings are read: a mistyped variable is told at once, without loading the server first.
  const { startServer } = await import('./start.js');
  const server = await startServer(config);
  const { publicUrl } = server.context.config;
  const publicNote = publicUrl !== server.url ? ` (public URL ${publicUrl})` : '';
  const lines = [`Patient Docs server listening on ${server.url}${publicNote}; data in ${config.dataDir}; API docs at ${publicUrl}/docs`];
  if (server.generatedAdminToken) lines.push(`Admin token (shown once, store it safely; only its hash is kept): ${server.generatedAdminToken}`);
  // One write: whatever waits for the "listening" line (a service manager's log, a script) has the
  // token line in the same read, never a moment later.
  console.log(lines.join('\n'));
  // First signal: stop accepting and let requests in flight finish for the grace period (an
  // upload cut off after it is discarded, never half kept). Second signal: stop at once; what a
  // hard stop leaves (temp files) is swept at the next start, as after a crash.
  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) {
      console.log(`Patient Docs server stopping at once (${signal} again); uploads and requests in flight are cut off`);
      // The audit entries of what was answered are written first (one synchronous write).
      void server.context.audit.flushBeforeExit().finally(() => process.exit(1));
      return;
    }
    closing = true;
    const inFlight = server.uploadsInFlight();
    const grace = `${config.shutdownGraceMs / 1000} s`;
    console.log(
      inFlight > 0
        ? `Patient Docs server stopping (${signal}): waiting up to ${grace} for ${inFlight} upload(s) in flight; ${signal} again stops at once`
        : `Patient Docs server stopping (${signal})`,
    );
    server.app.log.info({ signal, inFlight }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error('patient-docs-server: shutdown failed:', error instanceof Error ? error.message : error);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    console.error(`patient-docs-server: ${error.message}`);
    process.exit(2);
  }
  const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
  console.error(`patient-docs-server: failed to start: ${message}`);
  process.exit(1);
});
