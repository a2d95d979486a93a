/** Issues and verifies the RS256 access tokens of SPEC §5 (claims of §5.5). */
import { randomUUID } from 'node:crypto';
import { SignJWT, createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import type { KeyStore } from './keys.js';

export interface TokenSettings {
  issuer: string;
  audience: string;
  lifetimeSeconds: number;
  tenantId: string;
  externalIssuer?: string | undefined;
}

export interface IssuedToken {
  accessToken: string;
  expiresIn: number;
  scopes: string[];
}

export interface Principal {
  clientId: string;
  scopes: ReadonlySet<string>;
  issuer: string;
  expiresAt: number;
}

export class TokenError extends Error {
  override name = 'TokenError';
}

const CLOCK_TOLERANCE_SECONDS = 30;
const CACHE_LIMIT = 10_000;

export class TokenService {
  /**
   * Verified tokens until expiry (RS256 verification is the costliest step of a request), with the
   * kid of our own key that signed them: once that key is pruned, they are checked again, and fail.
   */
  private readonly verified = new Map<string, { principal: Principal; expiresAt: number; kid: string | undefined }>();
  private readonly externalKeys: JWTVerifyGetKey | undefined;

  constructor(
    private readonly keys: KeyStore,
    private readonly settings: TokenSettings,
    private readonly now: () => number = Date.now,
  ) {
    if (settings.externalIssuer) {
      this.externalKeys = createRemoteJWKSet(new URL(`${settings.externalIssuer.replace(/\/$/, '')}/.well-known/jwks.json`));
    }
  }

  async issue(clientId: string, scopes: string[], ipAddress: string): Promise<IssuedToken> {
    const { kid, privateKey } = await this.keys.activeKey();
    const issuedAt = Math.floor(this.now() / 1000);
    const accessToken = await new SignJWT({
      tid: this.settings.tenantId,
      scp: scopes.join(' '),
      azp: clientId,
      azpacr: '1',
      oid: clientId,
      ipaddr: ipAddress,
      ver: '2.0',
    })
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT', kid })
      .setIssuer(this.settings.issuer)
      .setAudience(this.settings.audience)
      .setSubject(clientId)
      .setIssuedAt(issuedAt)
      .setNotBefore(issuedAt)
      .setExpirationTime(issuedAt + this.settings.lifetimeSeconds)
      .setJti(randomUUID())
      .sign(privateKey);
    return { accessToken, expiresIn: this.settings.lifetimeSeconds, scopes };
  }

  private localKeyResolver(): JWTVerifyGetKey {
    return async (header, token) => {
      let jwks = createLocalJWKSet(await this.keys.jwks());
      try {
        return await jwks(header, token);
      } catch (error) {
        if (!(error instanceof errors.JWKSNoMatchingKey)) throw error;
        // The key may have been rotated by another instance or the admin CLI a moment ago.
        this.keys.invalidate();
        jwks = createLocalJWKSet(await this.keys.jwks());
        return jwks(header, token);
      }
    };
  }

  /** Verifies signature (RS256 only), aud, iss, exp and nbf; throws TokenError with a plain reason. */
  /**
   * The principal of a token this service verified before and that is still valid (not expired,
   * its key still trusted), without a turn of the event loop; undefined when it must be verified.
   */
  verifiedBefore(token: string): Principal | undefined {
    const cached = this.verified.get(token);
    if (cached === undefined) return undefined;
    if (cached.expiresAt * 1000 > this.now() && (cached.kid === undefined || this.keys.isTrusted(cached.kid))) return cached.principal;
    this.verified.delete(token);
    return undefined;
  }

  async verify(token: string): Promise<Principal> {
    const cached = this.verifiedBefore(token);
    if (cached) return cached;
    const { payload, kid } = await this.verifyPayload(token);
    const clientId = typeof payload.azp === 'string' ? payload.azp : typeof payload.sub === 'string' ? payload.sub : undefined;
    if (!clientId) throw new TokenError('token has no client identity (azp/sub)');
    const scopes = new Set(typeof payload.scp === 'string' ? payload.scp.split(' ').filter(Boolean) : []);
    const principal: Principal = { clientId, scopes, issuer: String(payload.iss), expiresAt: payload.exp ?? 0 };
    if (this.verified.size >= CACHE_LIMIT) this.verified.clear();
    this.verified.set(token, { principal, expiresAt: principal.expiresAt, kid });
    return principal;
  }

  /** The payload, and the kid of our own key that signed it (undefined for an external issuer's token). */
  private async verifyPayload(token: string): Promise<{ payload: JWTPayload; kid: string | undefined }> {
    const options = {
      audience: this.settings.audience,
      algorithms: ['RS256'],
      clockTolerance: CLOCK_TOLERANCE_SECONDS,
      currentDate: new Date(this.now()),
      requiredClaims: ['exp', 'iat', 'iss', 'aud'],
    };
    try {
      const issuer = unverifiedIssuer(token);
      if (this.externalKeys && issuer === this.settings.externalIssuer) {
        return { payload: (await jwtVerify(token, this.externalKeys, { ...options, issuer })).payload, kid: undefined };
      }
      const verified = await jwtVerify(token, this.localKeyResolver(), { ...options, issuer: this.settings.issuer });
      return { payload: verified.payload, kid: verified.protectedHeader.kid ?? '' };
    } catch (error) {
      throw new TokenError(describeJoseError(error));
    }
  }
}

function unverifiedIssuer(token: string): string | undefined {
  try {
    const payload = token.split('.')[1];
    if (!payload) return undefined;
    const iss = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { iss?: unknown }).iss;
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

function describeJoseError(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'token has expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'nbf') return 'token is not valid yet';
    if (error.claim === 'aud') return 'token audience is not this API';
    if (error.claim === 'iss') return 'token issuer is not trusted';
    return `token claim ${error.claim} is invalid`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return 'token algorithm is not allowed (RS256 only)';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'token signature is invalid';
  if (error instanceof errors.JWKSNoMatchingKey) return 'token was signed by an unknown key';
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return 'token is malformed';
  return 'token is invalid';
}
