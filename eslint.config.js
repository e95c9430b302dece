// Lint rules. The import doors between rooms are enforced here: roles share code through
// @a2c-smcp/protocol only, and protocol/ does no I/O (see docs/architecture.md).
import js from "@eslint/js";
import tseslint from "typescript-eslint";

const roles = ["server", "computer", "agent"];
const nodeIo = [
  "fs",
  "fs/promises",
  "net",
  "http",
  "https",
  "child_process",
  "dgram",
  "worker_threads",
];
const ioPatterns = nodeIo.flatMap((m) => [m, `node:${m}`]);

/**
 * Files of one role reach another package only by its name, and only the protocol's: another
 * role's folder or package is closed, and so is a relative path out to protocol/ (it would
 * bypass the package's dependencies and exports).
 */
const roleDoors = roles.map((role) => ({
  files: [`${role}/**/*.ts`],
  rules: {
    "no-restricted-imports": [
      "error",
      {
        patterns: [
          ...roles
            .filter((other) => other !== role)
            .map((other) => ({
              group: [`**/${other}/**`, `../${other}`, `../../${other}`, `@a2c-smcp/${other}`],
              message: `${role}/ may not import ${other}/: roles share code through @a2c-smcp/protocol only.`,
            })),
          {
            group: ["**/protocol/**", "../protocol", "../../protocol"],
            message:
              'import the protocol as "@a2c-smcp/protocol", not by a path out of this package.',
          },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  { ignores: ["node_modules/**", "reports/**", "**/dist/**", "**/*.js", "**/*.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_" },
      ],
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": [
        "error",
        { checksVoidReturn: { arguments: false } },
      ],
      "@typescript-eslint/require-await": "off",
      "no-console": "error",
    },
  },
  ...roleDoors,
  {
    files: ["protocol/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: ioPatterns.map((name) => ({ name, message: "protocol/ does no I/O." })),
          patterns: roles.map((r) => ({
            group: [`**/${r}/**`, `../${r}`, `@a2c-smcp/${r}`],
            message: "protocol/ imports no role.",
          })),
        },
      ],
    },
  },
  {
    // Entry points, scripts, benches and tests talk to a terminal.
    files: ["**/main.ts", "**/cli.ts", "scripts/**/*.ts", "bench/**/*.ts", "test/**/*.ts"],
    rules: { "no-console": "off" },
  },
  {
    files: ["test/**/*.ts", "**/*.test.ts"],
    rules: {
      "@typescript-eslint/no-unsafe-assignment": "off",
      "@typescript-eslint/no-unsafe-member-access": "off",
      "@typescript-eslint/no-unsafe-call": "off",
      "@typescript-eslint/no-unsafe-argument": "off",
      "@typescript-eslint/no-non-null-assertion": "off",
    },
  },
);
