/**
 * The transport of the bridge in the headless twin (HTTP on loopback) and in Electron (IPC).
 * Both sides import these names so the wire never drifts.
 *
 * HTTP: `POST /bridge/call/<method>` with a JSON array of the arguments and
 * `Authorization: Bearer <launch token>`; the answer is always a BridgeEnvelope (200), except 401
 * for a missing or wrong launch token. Events: Server-Sent Events at `GET /bridge/events?token=…`,
 * each `data:` line one BridgeEvent as JSON. The launch token reaches the page in the URL
 * fragment (`#token=…`), which the browser never sends to a server.
 */
import type { BridgeMethod } from './bridge.js';

export const BRIDGE_CALL_PREFIX = '/bridge/call/';
export const BRIDGE_EVENTS_PATH = '/bridge/events';
export const LAUNCH_TOKEN_PARAM = 'token';

export function bridgeCallPath(method: BridgeMethod): string {
  return `${BRIDGE_CALL_PREFIX}${method}`;
}

/** Electron IPC channel names. */
export const IPC_CALL_CHANNEL = 'patient-docs:bridge-call';
export const IPC_EVENT_CHANNEL = 'patient-docs:bridge-event';

/** The global the Electron preload exposes to the renderer. */
export const PRELOAD_GLOBAL = 'patientDocs';
