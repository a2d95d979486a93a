/**
 * A real keyring of the test's own: `dbus-run-session` with a `gnome-keyring-daemon` whose home,
 * data, cache and runtime folders are inside the test's temp folder. Without that, every daemon
 * would load and rewrite the user's own `~/.local/share/keyrings/login.keyring` (and put its control
 * socket in `~/.cache`): two test files running at once would overwrite each other's keyring file,
 * and every run would leave test secrets in the keyring of whoever ran the tests.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The shell line that starts and unlocks the session's keyring, to put before the test's commands. */
export const UNLOCK_KEYRING = 'echo -n pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null';

/** The environment of a keyring session living in `dir` (created if missing): pass it to `dbus-run-session`. */
export function keyringSessionEnv(dir: string, env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const home = path.join(dir, 'keyring-home');
  const runtime = path.join(home, 'run');
  fs.mkdirSync(runtime, { recursive: true, mode: 0o700 });
  const { DBUS_SESSION_BUS_ADDRESS: _bus, GNOME_KEYRING_CONTROL: _control, ...rest } = env;
  return {
    ...rest,
    HOME: home,
    XDG_DATA_HOME: path.join(home, 'data'),
    XDG_CONFIG_HOME: path.join(home, 'config'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    XDG_RUNTIME_DIR: runtime,
  };
}
