import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "out/**", "out-test/**", "node_modules/**", "test-real/**", "src/protocol.generated.ts"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["**/*.ts"],
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "no-restricted-syntax": [
        "error",
        { selector: "MemberExpression[property.name='outerHTML']", message: "build DOM nodes; never assign HTML strings" },
        { selector: "CallExpression[callee.property.name='insertAdjacentHTML']", message: "build DOM nodes; never assign HTML strings" },
      ],
    },
  },
  {
    // pure modules: tested under node without VS Code (see README)
    files: ["src/core/**/*.ts", "src/protocol/**/*.ts", "src/webview/**/*.ts"],
    rules: {
      "no-restricted-imports": ["error", { paths: [{ name: "vscode", message: "keep this module free of vscode (it is unit-tested under node)" }] }],
    },
  },
);
