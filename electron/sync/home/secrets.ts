/**
 * Where secrets live (DESIGN §4): the client secret and the webhook hmac go to the OS keychain
 * through keytar. Where no keychain is usable (a server without a Secret Service, a locked-down
 * workstation) they go to an AES-256-GCM encrypted file, and the store says so in `warning` so the
 * app can tell the user. Never to plain settings. Whichever store a secret was written to, it is
 * found again when the keychain comes or goes, and a file that cannot be read is set aside (never
 * deleted) and reported, so the app still starts and the secret can be entered again.
 */
import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto';
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

export type SecretBackend = 'keychain' | 'encrypted-file';

export interface SecretStore {
  get(account: string): Promise<string | undefined>;
  set(account: string, value: string): Promise<void>;
  /** True when there was something to delete. */
  delete(account: string): Promise<boolean>;
  readonly backend: SecretBackend;
  /** Set when secrets are not in the OS keychain: what that means, in plain words. */
  readonly warning?: string;
}

/** The part of keytar we use. */
export interface Keychain {
  getPassword(service: string, account: string): Promise<string | null>;
  setPassword(service: string, account: string, password: string): Promise<void>;
  deletePassword(service: string, account: string): Promise<boolean>;
}

export interface SecretStoreOptions {
  serviceName: string;
  /** The encrypted file used when no keychain is usable. */
  fallbackFile: string;
  /** Holds the file's key (created, mode 0600); default: `<fallbackFile>.key`. */
  keyFile?: string;
  /** A locked keychain may wait forever for a password prompt nobody sees. */
  probeTimeoutMs?: number;
  loadKeychain?: () => Promise<Keychain>;
}

const KEY_BYTES = 32;
const IV_BYTES = 12;
const FILE_FORMAT = 'patient-docs-secrets';
const PRIVATE_FILE_MODE = 0o600;

export async function openSecretStore(options: SecretStoreOptions): Promise<SecretStore> {
  const loadKeychain = options.loadKeychain ?? loadKeytar;
  const keyFile = options.keyFile ?? `${options.fallbackFile}.key`;
  const file = new EncryptedFileStore(options.fallbackFile, keyFile, options.serviceName);
  let reason: string;
  try {
    const keychain = await loadKeychain();
    await withTimeout(probe(keychain, options.serviceName), options.probeTimeoutMs ?? 5000, 'the keychain did not answer');
    const store = new KeychainStore(keychain, options.serviceName, file);
    await store.adoptFileSecrets();
    return store;
  } catch (error) {
    reason = error instanceof Error ? error.message : String(error);
  }
  file.noKeychain =
    `No usable system keychain (${reason}). Secrets are kept in an encrypted file (${options.fallbackFile}) ` +
    `whose key is in ${keyFile}: anyone who can read both files can read the secrets. ` +
    'To keep them in the keychain, install and unlock one (on Linux, GNOME Keyring or KWallet); they move there at the next start.';
  // Read once now, so a damaged file is set aside and reported at start, not at the first upload.
  await file.check();
  return file;
}

async function loadKeytar(): Promise<Keychain> {
  // keytar is CommonJS; its functions hang off the default export. Loading it fails where the
  // native part or libsecret is missing, which is one more reason to fall back.
  const keytar = await import('keytar');
  return keytar.default;
}

/** keytar throws only when it talks to the keychain, so a round trip is the only honest test. */
async function probe(keychain: Keychain, serviceName: string): Promise<void> {
  const account = `probe-${randomUUID()}`;
  const value = randomUUID();
  await keychain.setPassword(serviceName, account, value);
  const readBack = await keychain.getPassword(serviceName, account);
  await keychain.deletePassword(serviceName, account);
  if (readBack !== value) throw new Error('the keychain did not return what was stored');
}

function withTimeout<T>(work: Promise<T>, timeoutMs: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), timeoutMs);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

function refuseEmpty(value: string): void {
  // The keychain refuses empty secrets; both stores behave the same.
  if (value.length === 0) throw new Error('a secret must not be empty');
}

/**
 * The keychain, with the encrypted file behind it: secrets written there while no keychain was
 * usable move into the keychain at start (each removed from the file only once the keychain holds
 * it), and anything that could not move yet is still read from the file.
 */
class KeychainStore implements SecretStore {
  readonly backend = 'keychain';

  constructor(
    private readonly keychain: Keychain,
    private readonly serviceName: string,
    private readonly file: EncryptedFileStore,
  ) {}

  /** Set when the encrypted file could not be read and was moved aside. */
  get warning(): string | undefined {
    return this.file.setAside;
  }

  /**
   * The file is written only while the keychain is unusable, so what it holds is newer than the
   * keychain's copy (e.g. a secret re-entered, or the embedded server's regenerated one).
   */
  async adoptFileSecrets(): Promise<void> {
    const entries = await this.file.entries().catch(() => ({}));
    for (const [account, value] of Object.entries(entries)) {
      try {
        await this.keychain.setPassword(this.serviceName, account, value);
        await this.file.delete(account);
      } catch {
        // Stays in the file, which get() still reads; the next start tries again.
      }
    }
  }

  async get(account: string): Promise<string | undefined> {
    const value = await this.keychain.getPassword(this.serviceName, account);
    if (value !== null) return value;
    return this.file.get(account).catch(() => undefined);
  }

  async set(account: string, value: string): Promise<void> {
    refuseEmpty(value);
    await this.keychain.setPassword(this.serviceName, account, value);
    // An older copy left in the file would win at the next start.
    await this.file.delete(account).catch(() => false);
  }

  async delete(account: string): Promise<boolean> {
    const fromKeychain = await this.keychain.deletePassword(this.serviceName, account);
    const fromFile = await this.file.delete(account);
    return fromKeychain || fromFile;
  }
}

interface SealedFile {
  format: typeof FILE_FORMAT;
  version: 1;
  iv: string;
  tag: string;
  data: string;
}

/** Why a file cannot be opened: it is set aside, never deleted, and the user enters secrets again. */
class UnreadableSecrets extends Error {}

class EncryptedFileStore implements SecretStore {
  readonly backend = 'encrypted-file';
  /** Set by openSecretStore when this file is the store in use: why, and what it means. */
  noKeychain: string | undefined;
  /** Set once an unreadable file was moved aside: what happened and what to do. */
  setAside: string | undefined;
  /** Reads and writes of the one file run one after another. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly keyFile: string,
    private readonly serviceName: string,
  ) {}

  get warning(): string | undefined {
    const parts = [this.setAside, this.noKeychain].filter((part) => part !== undefined);
    return parts.length > 0 ? parts.join(' ') : undefined;
  }

  async get(account: string): Promise<string | undefined> {
    return (await this.entries())[account];
  }

  /** Opens the file once, setting it aside when it cannot be read. */
  async check(): Promise<void> {
    await this.entries();
  }

  entries(): Promise<Record<string, string>> {
    return this.serially(() => this.readEntries());
  }

  set(account: string, value: string): Promise<void> {
    refuseEmpty(value);
    return this.update((entries) => {
      entries[account] = value;
      return true;
    }).then(() => undefined);
  }

  delete(account: string): Promise<boolean> {
    return this.update((entries) => {
      if (!(account in entries)) return false;
      delete entries[account];
      return true;
    });
  }

  private update(change: (entries: Record<string, string>) => boolean): Promise<boolean> {
    return this.serially(async () => {
      const entries = await this.readEntries();
      const changed = change(entries);
      if (changed) await this.writeEntries(entries);
      return changed;
    });
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async readEntries(): Promise<Record<string, string>> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
      throw error;
    }
    try {
      return await this.unseal(text);
    } catch (error) {
      if (!(error instanceof UnreadableSecrets)) throw error;
      await this.moveAside(error.message);
      return {};
    }
  }

  private async unseal(text: string): Promise<Record<string, string>> {
    let sealed: SealedFile;
    try {
      sealed = JSON.parse(text) as SealedFile;
    } catch {
      throw new UnreadableSecrets('it is damaged (not complete JSON)');
    }
    if (sealed?.format !== FILE_FORMAT || sealed.version !== 1) throw new UnreadableSecrets('it is not a secrets file this app can read');
    const key = await this.existingKey();
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(sealed.iv, 'base64'));
      decipher.setAAD(Buffer.from(this.serviceName));
      decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
      const plain = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]);
      const entries = JSON.parse(plain.toString('utf8')) as unknown;
      if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) throw new Error('not an object');
      return entries as Record<string, string>;
    } catch {
      throw new UnreadableSecrets(`it was altered or does not belong to the key in ${this.keyFile}`);
    }
  }

  /** Renames, never deletes: the file may still be recoverable with the right key. */
  private async moveAside(reason: string): Promise<void> {
    const aside = `${this.file}.unreadable-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    await rename(this.file, aside);
    this.setAside =
      `The stored secrets could not be read (${reason}); the file was moved to ${aside}. ` +
      'Secrets that were only there must be entered again: the client secret in Settings (the server connection waits until then).';
  }

  /** The key for reading: never created here, since a new key cannot open an existing file. */
  private async existingKey(): Promise<Buffer> {
    let key: Buffer;
    try {
      key = await readFile(this.keyFile);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new UnreadableSecrets(`its key file ${this.keyFile} is missing`);
      throw error;
    }
    if (key.length !== KEY_BYTES) throw new UnreadableSecrets(`${this.keyFile} does not hold a ${KEY_BYTES}-byte key`);
    return key;
  }

  private async writeEntries(entries: Record<string, string>): Promise<void> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', await this.keyForWriting(), iv);
    cipher.setAAD(Buffer.from(this.serviceName));
    const data = Buffer.concat([cipher.update(JSON.stringify(entries), 'utf8'), cipher.final()]);
    const sealed: SealedFile = {
      format: FILE_FORMAT,
      version: 1,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
    };
    await writePrivateFile(this.file, JSON.stringify(sealed));
  }

  /**
   * Writes follow a read, which set aside any file this key could not open; so a missing or
   * malformed key no longer guards anything and is replaced (a malformed one moved aside, kept).
   */
  private async keyForWriting(): Promise<Buffer> {
    try {
      const key = await readFile(this.keyFile);
      if (key.length === KEY_BYTES) return key;
      await rename(this.keyFile, `${this.keyFile}.unreadable-${new Date().toISOString().replace(/[:.]/g, '-')}`);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    await mkdir(path.dirname(this.keyFile), { recursive: true });
    const key = randomBytes(KEY_BYTES);
    try {
      // 'wx': two processes starting at once must not each write their own key.
      await writeFile(this.keyFile, key, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
      return key;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EEXIST') return readFile(this.keyFile);
      throw error;
    }
  }
}

/** Replaces the file atomically, readable by its owner only. */
async function writePrivateFile(file: string, contents: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(temporary, contents, { mode: PRIVATE_FILE_MODE });
  await chmod(temporary, PRIVATE_FILE_MODE);
  await rename(temporary, file);
}
