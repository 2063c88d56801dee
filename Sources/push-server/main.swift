import PushServer
print("push-server: not wired yet")
