"""What a new user meets (cold ``ask``, each dtype) and what each passage budget keeps."""
