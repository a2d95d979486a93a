/**
 * Where secrets live (DESIGN §4): the client secret and the webhook hmac go to the OS keychain
 * through keytar. Where no keychain is usable (a server without a Secret Service, a locked-down
 * workstation) they go to an AES-256-GCM encrypted file, and the store says so in `warning` so the
 * app can tell the user. Never to plain settings.
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
  let reason: string;
  try {
    const keychain = await loadKeychain();
    await withTimeout(probe(keychain, options.serviceName), options.probeTimeoutMs ?? 5000, 'the keychain did not answer');
    return new KeychainStore(keychain, options.serviceName);
  } catch (error) {
    reason = error instanceof Error ? error.message : String(error);
  }
  const keyFile = options.keyFile ?? `${options.fallbackFile}.key`;
  const warning =
    `No usable system keychain (${reason}). Secrets are kept in an encrypted file (${options.fallbackFile}) ` +
    `whose key is in ${keyFile}: anyone who can read both files can read the secrets. ` +
    'To keep them in the keychain, install and unlock one (on Linux, GNOME Keyring or KWallet).';
  return new EncryptedFileStore(options.fallbackFile, keyFile, options.serviceName, warning);
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

class KeychainStore implements SecretStore {
  readonly backend = 'keychain';

  constructor(
    private readonly keychain: Keychain,
    private readonly serviceName: string,
  ) {}

  async get(account: string): Promise<string | undefined> {
    return (await this.keychain.getPassword(this.serviceName, account)) ?? undefined;
  }

  async set(account: string, value: string): Promise<void> {
    refuseEmpty(value);
    await this.keychain.setPassword(this.serviceName, account, value);
  }

  delete(account: string): Promise<boolean> {
    return this.keychain.deletePassword(this.serviceName, account);
  }
}

interface SealedFile {
  format: typeof FILE_FORMAT;
  version: 1;
  iv: string;
  tag: string;
  data: string;
}

class EncryptedFileStore implements SecretStore {
  readonly backend = 'encrypted-file';
  /** Writes are read-modify-write of one file: run them one after another. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly keyFile: string,
    private readonly serviceName: string,
    readonly warning: string,
  ) {}

  async get(account: string): Promise<string | undefined> {
    await this.writes;
    return (await this.readEntries())[account];
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
    const next = this.writes.then(async () => {
      const entries = await this.readEntries();
      const changed = change(entries);
      if (changed) await this.writeEntries(entries);
      return changed;
    });
    this.writes = next.catch(() => undefined);
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
    const sealed = JSON.parse(text) as SealedFile;
    if (sealed.format !== FILE_FORMAT || sealed.version !== 1) throw new Error(`${this.file} is not a secrets file this app can read`);
    const decipher = createDecipheriv('aes-256-gcm', await this.key(), Buffer.from(sealed.iv, 'base64'));
    decipher.setAAD(Buffer.from(this.serviceName));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
    try {
      const plain = Buffer.concat([decipher.update(Buffer.from(sealed.data, 'base64')), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as Record<string, string>;
    } catch {
      throw new Error(`${this.file} was altered or does not belong to the key in ${this.keyFile}`);
    }
  }

  private async writeEntries(entries: Record<string, string>): Promise<void> {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', await this.key(), iv);
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

  private async key(): Promise<Buffer> {
    try {
      const key = await readFile(this.keyFile);
      if (key.length !== KEY_BYTES) throw new Error(`${this.keyFile} does not hold a ${KEY_BYTES}-byte key`);
      return key;
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
