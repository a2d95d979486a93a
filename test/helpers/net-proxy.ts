/**
 * What a clinic's IT puts in front of the server: an HTTPS reverse proxy (nginx, Caddy, IIS) with
 * the clinic's own certificate, maybe under a path prefix. Plain Node here (nginx is not installed),
 * with hooks to answer as such a proxy does when things go wrong: HTML error pages (502, 503, 504,
 * 413 from `client_max_body_size`) and redirects.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ProxyAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface NetProxy {
  /** `https://127.0.0.1:PORT` plus the prefix, as IT would give it to the app. */
  url: string;
  port: number;
  /** Where requests go (the server's own http address); settable after start. */
  target: string;
  /** Answers a request itself instead of forwarding it (null: forward). */
  intercept: ((request: http.IncomingMessage) => ProxyAnswer | null) | null;
  /** Requests seen, by `METHOD path`. */
  seen: string[];
  /** Serves another certificate from now on (IT renewed it, maybe from another CA); https only. */
  setCertificate(key: Buffer, cert: Buffer): void;
  close(): Promise<void>;
}

/** An nginx-like error page, as a proxy sends it (HTML, not problem details). */
export function htmlPage(status: number, title: string): ProxyAnswer {
  return {
    status,
    headers: { 'content-type': 'text/html' },
    body: `<html>\r\n<head><title>${status} ${title}</title></head>\r\n<body>\r\n<center><h1>${status} ${title}</h1></center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n`,
  };
}

export async function startNetProxy(options: { key?: Buffer; cert?: Buffer; prefix?: string; host?: string } = {}): Promise<NetProxy> {
  const prefix = (options.prefix ?? '').replace(/\/$/, '');
  const state: { target: string; intercept: NetProxy['intercept']; seen: string[] } = { target: '', intercept: null, seen: [] };
  const handler = (request: http.IncomingMessage, response: http.ServerResponse) => {
    state.seen.push(`${request.method} ${request.url}`);
    const answer = state.intercept?.(request) ?? null;
    if (answer) {
      request.resume();
      response.writeHead(answer.status, answer.headers ?? {});
      response.end(answer.body ?? '');
      return;
    }
    let route = request.url ?? '/';
    if (prefix) {
      if (!route.startsWith(`${prefix}/`)) {
        request.resume();
        const page = htmlPage(404, 'Not Found');
        response.writeHead(page.status, page.headers);
        response.end(page.body);
        return;
      }
      route = route.slice(prefix.length);
    }
    const target = new URL(route, state.target);
    const upstream = http.request(target, { method: request.method, headers: { ...request.headers, host: target.host } }, (reply) => {
      response.writeHead(reply.statusCode ?? 502, reply.headers);
      reply.pipe(response);
    });
    upstream.on('error', () => {
      // What nginx answers when the server behind it is down or restarting.
      if (response.headersSent) return response.destroy();
      const page = htmlPage(502, 'Bad Gateway');
      response.writeHead(page.status, page.headers);
      response.end(page.body);
    });
    request.pipe(upstream);
  };
  const server = options.key && options.cert ? https.createServer({ key: options.key, cert: options.cert }, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const scheme = options.key ? 'https' : 'http';
  return {
    url: `${scheme}://${options.host ?? '127.0.0.1'}:${port}${prefix}`,
    port,
    get target() {
      return state.target;
    },
    set target(value: string) {
      state.target = value;
    },
    get intercept() {
      return state.intercept;
    },
    set intercept(value) {
      state.intercept = value;
    },
    seen: state.seen,
    setCertificate: (key, cert) => {
      if (!(server instanceof https.Server)) throw new Error('setCertificate: this proxy is plain http');
      server.setSecureContext({ key, cert });
      // Connections kept alive would go on with the old certificate.
      server.closeIdleConnections();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
