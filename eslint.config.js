// Lint: ESLint's and typescript-eslint's recommended rules, one assertion style, Node's globals.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      // An unused binding is dead code, unless its name starts with `_` (a rest's leftovers, a loop that only counts).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // V8's linear engine (`l`, src/linear-regex.ts) keeps user patterns from backtracking.
      'no-invalid-regexp': ['error', { allowConstructorFlags: ['l'] }],
    },
  },
  {
    files: ['**/*.ts'],
    rules: {
      // `x as T` only, and an object literal is declared with its type, not cast (a cast hides a
      // missing field: how a stored row's shape drifts from its type). A test may still pass a
      // partial fake straight to the function under test.
      '@typescript-eslint/consistent-type-assertions': ['error', { assertionStyle: 'as', objectLiteralTypeAssertions: 'allow-as-parameter' }],
    },
  },
  {
    // Tests read `--json` output as loosely as a script would.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
