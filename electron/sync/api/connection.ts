/**
 * The server connection from settings and the keychain, and the connection test of the first-run
 * screen, which names exactly what is wrong: unreachable, bad credentials, missing scope, wrong
 * organization.
 */
import got from 'got';
import type { ConnectionTestResult, FileError, RemoteSetupInput } from '../../../shared/bridge.js';
import { PLAIN_MESSAGES, type BridgeErrorCode } from '../../../shared/bridge-errors.js';
import { ApiClient } from './api-client.js';
import { ApiNetworkError, ApiProblemError, TokenError } from './api-errors.js';
import type { BandwidthLimiter } from '../upload/bandwidth.js';
import { forbiddenCode } from '../upload/failure.js';
import { CaCertificateError, certificateAuthorities, certificateProblem, parseCaCertificate, presentedCertificate, type TrustedCa } from './tls-trust.js';

export const CLIENT_SECRET_ACCOUNT = 'client-secret';
/** What the engine cannot work without. */
export const REQUIRED_SCOPES = ['Patient.File.Write', 'Patient.File.Read'];

export interface ConnectionSettings {
  serverUrl: string;
  tokenUrl: string;
  clientId: string;
  organizationId: string;
}

export function defaultTokenUrl(serverUrl: string): string {
  return `${serverUrl.replace(/\/$/, '')}/oauth2/token`;
}

export function connectionFrom(input: RemoteSetupInput): ConnectionSettings {
  const serverUrl = input.serverUrl.trim().replace(/\/$/, '');
  const tokenUrl = input.tokenUrl?.trim() ? input.tokenUrl.trim() : defaultTokenUrl(serverUrl);
  return { serverUrl, tokenUrl, clientId: input.clientId.trim(), organizationId: input.organizationId.toLowerCase() };
}

/**
 * Why an address may not carry the client secret, or null when it may: https, or plain http to
 * this computer only (the bundled server). Anything else sends the secret readable on the wire.
 */
export function insecureAddress(address: string): string | null {
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return `'${address}' is not an http(s) address`;
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol !== 'http:') return `'${address}' is not an http(s) address`;
  if (isLoopback(url.hostname)) return null;
  return `'${address}' uses plain http, which would send the client secret unencrypted over the network: use its https:// address (plain http is only for a server on this computer: localhost, 127.0.0.1, ::1)`;
}

function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** Throws when the server or token address would expose the client secret (see insecureAddress). */
export function createApiClient(connection: ConnectionSettings, clientSecret: string, options: { limiter?: BandwidthLimiter; resumableThreshold?: number; ca?: TrustedCa | null } = {}): ApiClient {
  const insecure = insecureAddress(connection.serverUrl) ?? insecureAddress(connection.tokenUrl);
  if (insecure) throw new Error(insecure);
  return new ApiClient({
    certificateAuthority: certificateAuthorities(options.ca ?? null),
    serverUrl: connection.serverUrl,
    organizationId: connection.organizationId,
    credentials: { tokenUrl: connection.tokenUrl, clientId: connection.clientId, clientSecret },
    ...(options.limiter ? { limiter: options.limiter } : {}),
    ...(options.resumableThreshold !== undefined ? { resumableThreshold: options.resumableThreshold } : {}),
  });
}

/**
 * The CA to trust for this connection: the one given with the input ('' forgets it), else the one
 * kept. Throws CaCertificateError for a file that is not a usable certificate.
 */
export function caFor(input: RemoteSetupInput, stored: TrustedCa | null): TrustedCa | null {
  if (input.caCertificate === undefined) return stored;
  if (input.caCertificate.trim() === '') return null;
  return parseCaCertificate(input.caCertificate);
}

export async function testConnection(input: RemoteSetupInput, storedCa: TrustedCa | null = null): Promise<ConnectionTestResult> {
  const connection = connectionFrom(input);
  // Checked before anything is sent: the secret must not leave in clear text even once.
  const insecure = insecureAddress(connection.serverUrl) ?? insecureAddress(connection.tokenUrl);
  if (insecure) return refused('reach', insecure.includes('plain http') ? 'INSECURE_ADDRESS' : 'UNREACHABLE', insecure);
  let ca: TrustedCa | null;
  try {
    ca = caFor(input, storedCa);
  } catch (error) {
    if (error instanceof CaCertificateError) return refused('reach', 'BAD_CA_FILE', error.message);
    throw error;
  }
  const authorities = certificateAuthorities(ca);
  // The secret goes to the token address, which may be another host: both must pass the certificate check first.
  for (const address of new Set([connection.serverUrl, connection.tokenUrl])) {
    try {
      await got.get(address, { throwHttpErrors: false, retry: { limit: 0 }, timeout: { request: 10_000 }, followRedirect: false, ...(authorities ? { https: { certificateAuthority: authorities } } : {}) });
    } catch (error) {
      const problem = certificateProblem((error as { code?: string }).code);
      if (!problem) return refused('reach', 'UNREACHABLE', address === connection.serverUrl ? describe(error) : `the token endpoint ${address}: ${describe(error)}`);
      const presented = await presentedCertificate(address);
      const trusted = ca ? `; trusted in addition to this computer's CAs: ${ca.certificates.map((cert) => `'${cert.subject}' (SHA-256 ${cert.fingerprint})`).join(', ')}` : '';
      return refused('reach', problem, `${address}: ${describe(error)}${presented ? `; ${presented}` : ''}${trusted}`);
    }
  }
  const api = createApiClient(connection, input.clientSecret, { ca });
  let scopes: string[];
  try {
    scopes = (await api.tokens.token()).scopes;
  } catch (error) {
    if (error instanceof TokenError) {
      if (error.status === 429) return refused('authenticate', 'RATE_LIMITED', error.message);
      if (!answeredAsTokenEndpoint(error)) {
        const moved = error.location ? `: it redirects to ${error.location} (use the address it redirects to, without the /oauth2/token part, as the server address)` : ' without an OAuth error';
        return refused('reach', error.status >= 500 ? 'SERVER_ERROR' : 'NOT_PATIENT_DOCS', `the token address ${connection.tokenUrl} answered ${error.status}${moved}`);
      }
      return refused('authenticate', 'BAD_CREDENTIALS', error.description ?? error.message);
    }
    const problem = error instanceof ApiNetworkError ? certificateProblem(error.code) : null;
    return refused('reach', problem ?? 'UNREACHABLE', `the token endpoint ${connection.tokenUrl}: ${describe(error)}`);
  }
  const missing = REQUIRED_SCOPES.filter((scope) => !scopes.includes(scope));
  if (missing.length > 0) return refused('scope', 'MISSING_SCOPE', `the client lacks ${missing.join(' and ')}`);
  try {
    await api.listPatients({ limit: 1 });
  } catch (error) {
    if (error instanceof ApiProblemError) {
      if (error.status === 403) {
        const code = forbiddenCode(error.problem.detail);
        return refused(code === 'MISSING_SCOPE' ? 'scope' : 'organization', code === 'MISSING_SCOPE' ? code : 'WRONG_ORGANIZATION', error.problem.detail);
      }
      if (error.status === 401) return refused('authenticate', 'BAD_CREDENTIALS', error.problem.detail);
      if (error.status === 400) return refused('organization', 'WRONG_ORGANIZATION', error.problem.detail);
      return refused('reach', error.status >= 500 ? 'SERVER_ERROR' : 'UNREACHABLE', error.problem.detail);
    }
    return refused('reach', 'UNREACHABLE', describe(error));
  }
  // The organization's name, when the server tells it (a server without the route leaves it out).
  const organizationName = await api.organization().then(
    (organization) => organization.name,
    () => null,
  );
  return { ok: true, step: null, error: null, organizationName };
}

/**
 * A token endpoint refusing credentials answers with an OAuth error document ({"error": "invalid_client"}).
 * A 404, a 405 or an HTML page from the token address means the address is not a Patient Docs
 * server (or its token address is wrong), which new credentials would not change.
 */
function answeredAsTokenEndpoint(error: TokenError): boolean {
  return !/^http_\d+$/.test(error.oauthError);
}

function refused(step: NonNullable<ConnectionTestResult['step']>, code: BridgeErrorCode, detail: string): ConnectionTestResult {
  const error: FileError = { code, message: PLAIN_MESSAGES[code], detail };
  return { ok: false, step, error, organizationName: null };
}

function describe(error: unknown): string {
  if (error instanceof ApiNetworkError) return `${error.code}: ${error.message}`;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (error instanceof Error && typeof code === 'string' && !error.message.includes(code)) return `${code}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
