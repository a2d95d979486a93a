// Lint: real-bug rules plus the import-boundary table of DESIGN §1 (the folder says where code runs).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const NODE_BUILTINS = ['node:*', 'fs', 'path', 'os', 'crypto', 'http', 'https', 'child_process', 'stream', 'url', 'util', 'net', 'worker_threads'];

/** Which layer may import what (DESIGN §1). */
const BOUNDARIES = [
  {
    files: ['shared/**/*.ts'],
    forbidden: [...NODE_BUILTINS, 'electron', 'react', 'react-dom', '**/server/**', '**/electron/**', '**/renderer/**'],
    why: 'shared/ runs anywhere: no node:*, DOM, electron or other layers',
  },
  {
    files: ['server/**/*.ts'],
    forbidden: ['electron', 'react', '**/electron/**', '**/renderer/**'],
    why: 'server/ never imports electron/ or renderer/',
  },
  {
    files: ['electron/sync/**/*.ts'],
    forbidden: ['electron', 'react', '**/renderer/**', '**/server/**', '**/main/**', '**/preload/**', '**/headless/**'],
    why: 'the sync engine never imports electron, the server or the UI',
  },
  {
    files: ['electron/headless/**/*.ts'],
    forbidden: ['electron', '**/renderer/**', '**/main/**', '**/preload/**'],
    why: 'the headless twin runs without Electron',
  },
  {
    files: ['renderer/**/*.ts', 'renderer/**/*.tsx'],
    forbidden: [...NODE_BUILTINS, 'electron', '**/server/**', '**/electron/**'],
    why: 'renderer/ talks to the engine only through the typed bridge in shared/',
  },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'release/**', 'data/**', 'test/artifacts/**', 'renderer/dist/**', '**/*.js', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.cts'],
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['vitest.config.ts'] }, tsconfigRootDir: import.meta.dirname },
      globals: { ...globals.node },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false, attributes: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    files: ['shared/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'error' },
  },
  ...BOUNDARIES.map(({ files, forbidden, why }) => ({
    files,
    ignores: ['**/*.test.ts', '**/*.test.tsx'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [{ group: forbidden, message: why }] }],
    },
  })),
  {
    files: ['**/*.test.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
);
