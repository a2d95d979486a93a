/**
 * The URLs the server hands out. Download and thumbnail URIs are signed (HMAC-SHA256 over
 * document, version, kind, expiry and the client and organization the link was handed to: every
 * parameter the link has, and a link with any other parameter is refused) and expire, so they
 * work without a bearer token and cannot be forged, extended, altered or passed off as another
 * client's: the audit log names who a download was for (the S3 pre-signed URL model).
 *
 * Links signed before the holder was part of them (no `client`/`org` parameters) are still
 * honoured until they expire, at most 16 minutes after the update; their downloads are recorded
 * with an unknown client. A link's holder cannot be removed to make it look like one of those:
 * the two kinds sign different texts.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const LINK_LIFETIME_SECONDS = 15 * 60;
const EXPIRY_STEP_SECONDS = 60;
export type LinkKind = 'content' | 'thumbnail';

/** The query parameters of a link; the signature covers every one but itself. */
export const LINK_PARAMETERS: ReadonlySet<string> = new Set(['v', 'expires', 'sig', 'client', 'org']);

/**
 * Parameters a link carries that no signature covers: a link is served exactly as it was signed,
 * so nothing added to it (such as `disposition=inline`) can change how its bytes are served.
 */
export function unsignedParameters(query: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(query).filter((name) => !LINK_PARAMETERS.has(name));
}

/** Who a link was handed to. */
export interface LinkHolder {
  clientId: string;
  organizationId: string;
}

export interface SignedLink {
  documentId: string;
  version: number;
  kind: LinkKind;
  expires: number;
  /** Absent only in links signed by versions before the audit log. */
  holder?: LinkHolder;
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
    const text = link.holder
      ? `link-v2\n${link.documentId}\n${link.version}\n${link.kind}\n${link.expires}\n${link.holder.clientId}\n${link.holder.organizationId}`
      : `${link.documentId}\n${link.version}\n${link.kind}\n${link.expires}`;
    return createHmac('sha256', this.signingKey).update(text).digest('base64url');
  }

  /**
   * Expiry is rounded up to the next minute, so a link is valid for 15 to 16 minutes and stays the
   * same URL for a minute (nothing else in it changes): the search page cache keeps a page's links
   * for that minute, and the browser can cache thumbnails by URL. Links are signed each time, not
   * cached: a cache of them made a page of new links (the usual uncached page) cost about four
   * times its signatures, and saved about 2 µs per link when they were not new.
   */
  signed(documentId: string, version: number, kind: LinkKind, holder: LinkHolder): string {
    const expires = this.currentExpiry();
    const signature = this.signature({ documentId, version, kind, expires, holder });
    return `${this.publicUrl}/storage/v1/documents/${documentId}/${kind}?v=${version}&expires=${expires}&sig=${signature}&client=${encodeURIComponent(holder.clientId)}&org=${holder.organizationId}`;
  }

  /** The expiry links signed now carry; while it stays the same, so do the links. */
  currentExpiry(): number {
    return Math.ceil((this.now() / 1000 + LINK_LIFETIME_SECONDS) / EXPIRY_STEP_SECONDS) * EXPIRY_STEP_SECONDS;
  }

  /** Returns 'valid', 'expired' or 'invalid' (tampered); both failures are 403 to the client. */
  check(link: SignedLink, signature: string): 'valid' | 'expired' | 'invalid' {
    const expected = Buffer.from(this.signature(link));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return 'invalid';
    return link.expires * 1000 < this.now() ? 'expired' : 'valid';
  }
}
