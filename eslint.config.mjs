// ESLint 9 flat config for the TypeScript sources (prettier owns formatting).
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';

const SERVER_MODULES = ['**/api/request', '**/api/stream'];
const CLIENT_ONLY =
  'only src/api/client.ts imports request and stream: call the client from a model';
const VIEWS_RENDER_MODELS =
  "a view renders a model: move the server call into the feature's model";

export default tseslint.config(
  {
    ignores: [
      'lib/',
      'node_modules/',
      'ranktable/labextension/',
      'ui-tests/',
      'coverage/',
      '**/*.d.ts',
      'src/api/openapi.ts'
    ]
  },
  ...tseslint.configs.recommended,
  prettier,
  {
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    rules: {
      '@typescript-eslint/naming-convention': [
        'error',
        {
          selector: 'interface',
          format: ['PascalCase'],
          custom: { regex: '^I[A-Z]', match: true }
        }
      ],
      '@typescript-eslint/no-unused-vars': ['warn', { args: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-namespace': 'off',
      curly: ['error', 'all'],
      eqeqeq: 'error',
      'prefer-arrow-callback': 'error'
    }
  },
  // Only the typed client (src/api/client.ts) talks to the server: models call it, views call models.
  {
    files: ['src/**/*.ts', 'src/**/*.tsx'],
    ignores: [
      'src/api/**',
      'src/**/*.spec.ts',
      'src/**/*.spec.tsx',
      'src/testing/**'
    ],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ group: SERVER_MODULES, message: CLIENT_ONLY }] }
      ]
    }
  },
  {
    files: ['src/**/*.tsx'],
    ignores: ['src/**/*.spec.tsx'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: SERVER_MODULES, message: CLIENT_ONLY },
            {
              group: ['**/api/client'],
              allowTypeImports: true,
              message: VIEWS_RENDER_MODELS
            }
          ]
        }
      ]
    }
  }
);
