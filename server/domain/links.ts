/**
 * The URLs the server hands out. Download and thumbnail URIs are signed (HMAC-SHA256 over
 * document, version, kind and expiry) and expire, so they work without a bearer token and
 * cannot be forged or extended.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const LINK_LIFETIME_SECONDS = 15 * 60;
export type LinkKind = 'content' | 'thumbnail';

export interface SignedLink {
  documentId: string;
  version: number;
  kind: LinkKind;
  expires: number;
}

export class Links {
  constructor(
    private readonly publicUrl: string,
    private readonly signingKey: Buffer,
    private readonly now: () => number = Date.now,
  ) {}

  storageUrl(documentId: string): string {
    return `${this.publicUrl}/storage/v1/documents/${documentId}`;
  }

  private signature(link: SignedLink): string {
    return createHmac('sha256', this.signingKey).update(`${link.documentId}\n${link.version}\n${link.kind}\n${link.expires}`).digest('base64url');
  }

  signed(documentId: string, version: number, kind: LinkKind): string {
    const expires = Math.floor(this.now() / 1000) + LINK_LIFETIME_SECONDS;
    const link = { documentId, version, kind, expires };
    const segment = kind === 'content' ? 'content' : 'thumbnail';
    return `${this.publicUrl}/storage/v1/documents/${documentId}/${segment}?v=${version}&expires=${expires}&sig=${this.signature(link)}`;
  }

  /** Returns 'valid', 'expired' or 'invalid' (tampered); both failures are 403 to the client. */
  check(link: SignedLink, signature: string): 'valid' | 'expired' | 'invalid' {
    const expected = Buffer.from(this.signature(link));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'invalid';
    return link.expires * 1000 < this.now() ? 'expired' : 'valid';
  }
}
