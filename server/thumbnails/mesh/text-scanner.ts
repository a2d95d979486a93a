/**
 * A cursor over the bytes of a text mesh format (ASCII STL, OBJ, ASCII PLY). It reads numbers straight
 * from the bytes: no whole-file string (a 200 MB string would not fit the worker's heap) and no
 * per-line allocation, which keeps a million-line file in the sub-second range.
 */
const SPACE = 0x20;
const TAB = 0x09;
const CR = 0x0d;
const LF = 0x0a;
const ZERO = 0x30;
const NINE = 0x39;
const MINUS = 0x2d;
const PLUS = 0x2b;
const DOT = 0x2e;
const LOWER_E = 0x65;
const UPPER_E = 0x45;
const SLASH = 0x2f;

export class TextScanner {
  pos: number;
  private digitsValue = 0;

  constructor(
    private readonly bytes: Uint8Array,
    start = 0,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.bytes.length;
  }

  /** Skips spaces and tabs, never a line break: formats here are line-oriented. */
  skipBlanks(): void {
    const b = this.bytes;
    while (this.pos < b.length && (b[this.pos] === SPACE || b[this.pos] === TAB || b[this.pos] === CR)) this.pos++;
  }

  /** Skips blanks and line breaks: for formats (PLY bodies) where rows are just a sequence of values. */
  skipWhitespace(): void {
    const b = this.bytes;
    while (this.pos < b.length && isSeparator(b[this.pos] as number)) this.pos++;
  }

  atLineEnd(): boolean {
    this.skipBlanks();
    return this.pos >= this.bytes.length || this.bytes[this.pos] === LF;
  }

  nextLine(): void {
    const end = this.bytes.indexOf(LF, this.pos);
    this.pos = end === -1 ? this.bytes.length : end + 1;
  }

  /** True (and consumed) when the next token is exactly `keyword`. */
  keyword(keyword: string): boolean {
    this.skipBlanks();
    const b = this.bytes;
    const end = this.pos + keyword.length;
    if (end > b.length) return false;
    for (let i = 0; i < keyword.length; i++) {
      if (b[this.pos + i] !== keyword.charCodeAt(i)) return false;
    }
    if (end < b.length && !isSeparator(b[end] as number)) return false;
    this.pos = end;
    return true;
  }

  /** The next whitespace-delimited token as text (header lines only: it allocates). */
  word(): string {
    this.skipBlanks();
    const start = this.pos;
    const b = this.bytes;
    while (this.pos < b.length && !isSeparator(b[this.pos] as number)) this.pos++;
    return Buffer.from(b.buffer, b.byteOffset + start, this.pos - start).toString('latin1');
  }

  /** The next number, or NaN when the token is not one (the token is consumed either way). */
  number(): number {
    this.skipBlanks();
    const b = this.bytes;
    const start = this.pos;
    const sign = this.sign();
    let digitCount = this.digits();
    let value = this.digitsValue;
    if (b[this.pos] === DOT) {
      this.pos++;
      const fractionCount = this.digits();
      value += this.digitsValue / 10 ** fractionCount;
      digitCount += fractionCount;
    }
    if (digitCount > 0 && (b[this.pos] === LOWER_E || b[this.pos] === UPPER_E)) {
      this.pos++;
      const exponentSign = this.sign();
      if (this.digits() === 0) return this.rejectToken(start);
      value *= 10 ** (exponentSign * this.digitsValue);
    }
    if (digitCount === 0 || (this.pos < b.length && !isSeparator(b[this.pos] as number))) return this.rejectToken(start);
    return sign * value;
  }

  /** An OBJ face corner `v`, `v/vt`, `v//vn` or `v/vt/vn`: returns the vertex index, NaN if absent. */
  faceCornerIndex(): number {
    this.skipBlanks();
    const b = this.bytes;
    const start = this.pos;
    const sign = this.sign();
    if (this.digits() === 0) return this.rejectToken(start);
    const index = this.digitsValue;
    while (this.pos < b.length && (b[this.pos] === SLASH || isDigitOrSign(b[this.pos] as number))) this.pos++;
    if (this.pos < b.length && !isSeparator(b[this.pos] as number)) return this.rejectToken(start);
    return sign * index;
  }

  private sign(): number {
    const c = this.bytes[this.pos];
    if (c === MINUS || c === PLUS) {
      this.pos++;
      return c === MINUS ? -1 : 1;
    }
    return 1;
  }

  /** Reads a run of digits: returns how many, leaves their value in `digitsValue` (no allocation per number). */
  private digits(): number {
    const b = this.bytes;
    let value = 0;
    let count = 0;
    while (this.pos < b.length) {
      const c = b[this.pos] as number;
      if (c < ZERO || c > NINE) break;
      value = value * 10 + (c - ZERO);
      count++;
      this.pos++;
    }
    this.digitsValue = value;
    return count;
  }

  private rejectToken(start: number): number {
    const b = this.bytes;
    this.pos = start;
    while (this.pos < b.length && !isSeparator(b[this.pos] as number)) this.pos++;
    return Number.NaN;
  }
}

function isSeparator(c: number): boolean {
  return c === SPACE || c === TAB || c === CR || c === LF;
}

function isDigitOrSign(c: number): boolean {
  return (c >= ZERO && c <= NINE) || c === MINUS || c === PLUS;
}
