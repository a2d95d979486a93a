/**
 * A reverse proxy that misbehaves on purpose, between the engine and the server: random 500s and
 * 429s, dropped connections (before, during and after the upstream did the work) and 2 s stalls.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Fault = 'error500' | 'error429' | 'drop' | 'dropMidBody' | 'loseResponse' | 'stall';

export interface FaultProxy {
  url: string;
  port: number;
  /** Where requests go; settable after start, since the server's public URL names the proxy. */
  target: string;
  injected: Record<Fault, number>;
  requests: number;
  faultRate: number;
  close(): Promise<void>;
}

export async function startFaultProxy(
  options: {
    faultRate?: number;
    random?: () => number;
    /** Chooses the fault of each request itself (null: none), instead of faultRate's random draw. */
    pick?: (request: http.IncomingMessage) => Fault | null;
  } = {},
): Promise<FaultProxy> {
  const random = options.random ?? Math.random;
  const injected: Record<Fault, number> = { error500: 0, error429: 0, drop: 0, dropMidBody: 0, loseResponse: 0, stall: 0 };
  const state = { target: '', requests: 0, faultRate: options.faultRate ?? 0.25 };
  const faults: Fault[] = ['error500', 'error429', 'drop', 'dropMidBody', 'loseResponse', 'stall'];

  const forward = (request: http.IncomingMessage, response: http.ServerResponse | null, onUpstreamDone?: () => void) => {
    const target = new URL(request.url ?? '/', state.target);
    const upstream = http.request(target, { method: request.method, headers: { ...request.headers, host: target.host } }, (answer) => {
      if (!response) {
        answer.resume();
        answer.on('end', () => onUpstreamDone?.());
        return;
      }
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => response?.destroy());
    request.pipe(upstream);
    return upstream;
  };

  const server = http.createServer((request, response) => {
    state.requests += 1;
    const fault = options.pick ? options.pick(request) : random() < state.faultRate ? faults[Math.floor(random() * faults.length)]! : null;
    if (fault) injected[fault] += 1;
    switch (fault) {
      case 'error500':
        request.resume();
        response.writeHead(500, { 'content-type': 'application/problem+json' });
        return response.end(JSON.stringify({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: 'injected by the fault proxy', instance: request.url, messageKey: 'INTERNAL_ERROR', occurredAt: new Date().toISOString() }));
      case 'error429':
        request.resume();
        response.writeHead(429, { 'content-type': 'application/problem+json', 'retry-after': '1' });
        return response.end(JSON.stringify({ type: 'about:blank', title: 'Too Many Requests', status: 429, detail: 'injected by the fault proxy', instance: request.url, messageKey: 'RATE_LIMITED', occurredAt: new Date().toISOString() }));
      case 'drop':
        return request.socket.destroy();
      case 'dropMidBody': {
        // Forward part of the body, then cut both sides: a connection lost in the middle of an upload.
        const upstream = forward(request, response);
        let seen = 0;
        request.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (seen > 256 * 1024) {
            upstream.destroy();
            request.socket.destroy();
          }
        });
        request.on('end', () => {
          upstream.destroy();
          request.socket.destroy();
        });
        return;
      }
      case 'loseResponse':
        // The server did the work; the answer never arrives.
        forward(request, null, () => request.socket.destroy());
        return;
      case 'stall':
        request.pause();
        setTimeout(() => {
          request.resume();
          forward(request, response);
        }, 2000);
        return;
      case null:
        forward(request, response);
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    get target() {
      return state.target;
    },
    set target(value: string) {
      state.target = value;
    },
    injected,
    get requests() {
      return state.requests;
    },
    get faultRate() {
      return state.faultRate;
    },
    set faultRate(value: number) {
      state.faultRate = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
