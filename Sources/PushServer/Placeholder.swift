// Placeholder until the PushServer layer lands; replace this file.
