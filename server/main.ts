/** `npm run server`: the bundled server, configured by environment variables (DESIGN §2). */
import { ConfigError, loadConfig } from './config.js';
import { startServer } from './start.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const server = await startServer(config);
  const { publicUrl } = server.context.config;
  const publicNote = publicUrl !== server.url ? ` (public URL ${publicUrl})` : '';
  console.log(`Patient Docs server listening on ${server.url}${publicNote}; data in ${config.dataDir}; API docs at ${publicUrl}/docs`);
  if (server.generatedAdminToken) {
    console.log(`Admin token (shown once, store it safely; only its hash is kept): ${server.generatedAdminToken}`);
  }
  let closing = false;
  const shutdown = (signal: string): void => {
    if (closing) return;
    closing = true;
    server.app.log.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
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
