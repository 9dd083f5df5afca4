"""Where one question's time goes: in process, per engine setting, and against ``serve``."""
