"""What `valet doctor` and `valet onboard` hand each channel's own checks and set-up step
(channels/<name>/doctor.py, onboard.py): the doctor's report, the wizard's questions, its
draft of valet.yaml and the env file, and the context a step reads. Below `channels/`, so a
channel's package may use them; the commands themselves live in bot/cli."""
