// Placeholder until the JWTSigner layer lands; replace this file.
