import { BRIDGE_METHOD_NAMES, type BridgeApi, type BridgeClient, type BridgeEvent, type BridgeMethod } from '../../../shared/bridge.js';
import { BRIDGE_EVENTS_PATH, LAUNCH_TOKEN_PARAM, bridgeCallPath } from '../../../shared/bridge-http.js';
import { BridgeError, isEnvelope, unwrapEnvelope } from './errors.js';

export interface HttpBridgeOptions {
  /** Origin of the headless twin, e.g. http://127.0.0.1:4317. */
  baseUrl: string;
  /** The per-launch token from the page's URL fragment. */
  token: string;
  fetch?: typeof fetch;
  /** Injected for tests; the browser's EventSource otherwise. */
  createEventSource?: (url: string) => EventSourceLike;
}

export interface EventSourceLike {
  addEventListener(type: 'message', listener: (message: { data: string }) => void): void;
  close(): void;
}

type AnyMethod = (...args: unknown[]) => Promise<unknown>;

const EXPIRED_LINK = 'This page was opened with an old link. Open the address Patient Docs printed when it started.';
const NOT_RESPONDING = 'Patient Docs is not responding. Check that it is still running.';

/** The headless side of the bridge: every method is POST /bridge/call/<method>, events arrive over SSE. */
export function createHttpBridgeClient(options: HttpBridgeOptions): BridgeClient {
  const fetchImplementation = options.fetch ?? globalThis.fetch.bind(globalThis);
  const methods = {} as Record<BridgeMethod, AnyMethod>;
  for (const method of BRIDGE_METHOD_NAMES) {
    methods[method] = (...args) => callOverHttp(fetchImplementation, options, method, args);
  }
  const events = createEventHub(options);
  return Object.assign(methods as unknown as BridgeApi, { onEvent: events.subscribe });
}

async function callOverHttp(fetchImplementation: typeof fetch, options: HttpBridgeOptions, method: BridgeMethod, args: unknown[]): Promise<unknown> {
  let response: Response;
  try {
    response = await fetchImplementation(new URL(bridgeCallPath(method), options.baseUrl).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${options.token}` },
      body: JSON.stringify(args),
    });
  } catch (error) {
    throw new BridgeError('UNAVAILABLE', NOT_RESPONDING, error instanceof Error ? error.message : undefined);
  }
  if (response.status === 401) throw new BridgeError('UNAVAILABLE', EXPIRED_LINK);
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    throw new BridgeError('INTERNAL', 'Patient Docs answered in an unexpected way.', `HTTP ${response.status} for ${method}`);
  }
  if (!isEnvelope(body)) throw new BridgeError('INTERNAL', 'Patient Docs answered in an unexpected way.', `HTTP ${response.status} for ${method}`);
  return unwrapEnvelope(body);
}

/** One EventSource shared by every listener, opened on the first subscription and closed after the last. */
function createEventHub(options: HttpBridgeOptions): { subscribe: BridgeClient['onEvent'] } {
  const listeners = new Set<(event: BridgeEvent) => void>();
  let source: EventSourceLike | null = null;
  const open = (): EventSourceLike => {
    const url = new URL(BRIDGE_EVENTS_PATH, options.baseUrl);
    url.searchParams.set(LAUNCH_TOKEN_PARAM, options.token);
    const created = options.createEventSource ? options.createEventSource(url.toString()) : new EventSource(url.toString());
    created.addEventListener('message', (message: { data: string }) => {
      let event: BridgeEvent;
      try {
        event = JSON.parse(message.data) as BridgeEvent;
      } catch {
        return; // a keep-alive or a torn line: nothing to show
      }
      for (const listener of listeners) listener(event);
    });
    return created;
  };
  const subscribe = (listener: (event: BridgeEvent) => void): (() => void) => {
    listeners.add(listener);
    source ??= open();
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && source) {
        source.close();
        source = null;
      }
    };
  };
  return { subscribe };
}
