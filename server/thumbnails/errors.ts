/** Why a thumbnail could not be made. Callers store the reason and show a placeholder. */
export type ThumbnailFailureReason = 'malformed' | 'too-large' | 'timeout' | 'unsupported';

/** The only error `renderThumbnail` ever rejects with, so callers need one `instanceof` check. */
export class ThumbnailError extends Error {
  override readonly name = 'ThumbnailError';

  constructor(
    readonly reason: ThumbnailFailureReason,
    message: string,
  ) {
    super(message);
  }
}

/** Uploaded files are hostile until parsed: a failed parse is the file's fault, not ours. */
export function malformed(message: string): ThumbnailError {
  return new ThumbnailError('malformed', message);
}

export function tooLarge(message: string): ThumbnailError {
  return new ThumbnailError('too-large', message);
}

export function isThumbnailFailureReason(value: unknown): value is ThumbnailFailureReason {
  return value === 'malformed' || value === 'too-large' || value === 'timeout' || value === 'unsupported';
}
