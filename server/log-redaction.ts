/**
 * What the request log may show of a URL. Signed download and thumbnail links carry their
 * signature in the query (`sig`): logged whole, anyone who reads the log could fetch the file for
 * the link's 15 minutes. OAuth parameters in a query string (a client that puts client_secret in the
 * URL) are secrets too. Their values are replaced; the parameter names stay, for diagnosis.
 */
const SECRET_PARAMETERS = /([?&](?:sig|signature|client_secret|access_token|refresh_token|token|password)=)[^&#]*/gi;

export function redactedUrl(url: string): string {
  return url.includes('?') ? url.replace(SECRET_PARAMETERS, '$1[redacted]') : url;
}
