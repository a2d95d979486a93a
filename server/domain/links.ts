/**
 * The URLs the server hands out. Download and thumbnail URIs are signed (HMAC-SHA256 over
 * document, version, kind and expiry) and expire, so they work without a bearer token and
 * cannot be forged or extended.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const LINK_LIFETIME_SECONDS = 15 * 60;
const EXPIRY_STEP_SECONDS = 60;
const CACHE_LIMIT = 100_000;
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

  /**
   * Expiry is rounded up to the next minute, so a link is valid for 15 to 16 minutes and stays the
   * same URL for a minute: a page of search results costs no HMACs when asked again, and the
   * browser can cache thumbnails by URL.
   */
  signed(documentId: string, version: number, kind: LinkKind): string {
    const expires = this.currentExpiry();
    if (expires !== this.cachedExpires || this.cache.size > CACHE_LIMIT) {
      this.cache.clear();
      this.cachedExpires = expires;
    }
    const key = `${documentId}\n${version}\n${kind}`;
    let url = this.cache.get(key);
    if (url === undefined) {
      const segment = kind === 'content' ? 'content' : 'thumbnail';
      url = `${this.publicUrl}/storage/v1/documents/${documentId}/${segment}?v=${version}&expires=${expires}&sig=${this.signature({ documentId, version, kind, expires })}`;
      this.cache.set(key, url);
    }
    return url;
  }

  /** The expiry links signed now carry; while it stays the same, so do the links. */
  currentExpiry(): number {
    return Math.ceil((this.now() / 1000 + LINK_LIFETIME_SECONDS) / EXPIRY_STEP_SECONDS) * EXPIRY_STEP_SECONDS;
  }

  private readonly cache = new Map<string, string>();
  private cachedExpires = 0;

  /** Returns 'valid', 'expired' or 'invalid' (tampered); both failures are 403 to the client. */
  check(link: SignedLink, signature: string): 'valid' | 'expired' | 'invalid' {
    const expected = Buffer.from(this.signature(link));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'invalid';
    return link.expires * 1000 < this.now() ? 'expired' : 'valid';
  }
}
