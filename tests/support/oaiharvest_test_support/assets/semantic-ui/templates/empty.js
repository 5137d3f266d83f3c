// Webpack's @templates alias needs this folder in the assets root; no template overrides.
