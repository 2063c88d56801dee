// Placeholder until the APNsClient layer lands; replace this file.
